class CacheMixin:
    def get(self):
        return self.cached() or super().get()

    def cached(self):
        return None
