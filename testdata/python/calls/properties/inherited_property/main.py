def slugify(text):
    return text.lower().replace(" ", "-")


class Page:
    title = "Hello World"

    @property
    def slug(self):
        return slugify(self.title)


class BlogPost(Page):
    pass


def run():
    return BlogPost().slug


run()
