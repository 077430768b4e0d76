import threading
from argparse import ArgumentParser


class Worker(threading.Thread):
    def run(self):
        self.report()

    def report(self):
        return self.name

    def launch(self):
        self.start()
        self.run()


class Cli(ArgumentParser):
    def configure(self):
        self.add_argument("--verbose")
        return self.parse_args()


Worker().launch()
Cli().configure()
