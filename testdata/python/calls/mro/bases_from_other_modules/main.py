from mixins import CacheMixin
from views import View


class Page(CacheMixin, View):
    pass


def run():
    return Page().get()


run()
