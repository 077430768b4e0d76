from pkg.app import start

start()
