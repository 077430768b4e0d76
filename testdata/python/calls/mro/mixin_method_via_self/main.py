class JsonMixin:
    def to_json(self):
        return "{}"


class BaseView:
    def render(self):
        return self.to_json()


class UserView(JsonMixin, BaseView):
    pass


def run():
    return UserView().render()


run()
