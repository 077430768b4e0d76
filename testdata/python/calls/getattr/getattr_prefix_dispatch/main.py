class Shell:
    def do_open(self):
        return "open"

    def do_close(self):
        return "close"

    def onecmd(self, cmd):
        return getattr(self, "do_" + cmd)()


shell = Shell()
shell.onecmd("open")
shell.onecmd("close")
