class View:
    def get(self):
        return "fresh"
