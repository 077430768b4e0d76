class Query:
    def __init__(self, text):
        self.text = text

    def where(self, cond):
        return Query(self.text + " WHERE " + cond)

    def limit(self, n):
        return Query(f"{self.text} LIMIT {n}")

    def sql(self):
        return self.text


def run():
    q = Query("SELECT * FROM t")
    q = q.where("x > 1")
    q = q.limit(3)
    return q.sql()


run()
