class Repo:
    def save(self, item):
        return item


def persist(repo, item):
    return repo.save(item)


def run():
    return persist(Repo(), "x")


run()
