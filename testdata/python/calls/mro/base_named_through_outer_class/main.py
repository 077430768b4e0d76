class Outer:
    class Inner:
        def helper(self):
            return "inner"


class Derived(Outer.Inner):
    def own(self):
        return self.helper()


item = Derived()
item.own()
item.helper()
