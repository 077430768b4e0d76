class Stream:
    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration


def open_stream():
    return Stream()


s = open_stream()
for item in [1, 2]:
    print(item)
