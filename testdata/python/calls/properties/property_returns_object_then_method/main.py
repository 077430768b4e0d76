class Connection:
    def execute(self, sql):
        return sql


class Repo:
    @property
    def conn(self):
        return Connection()


def run():
    repo = Repo()
    return repo.conn.execute("select 1")


run()
