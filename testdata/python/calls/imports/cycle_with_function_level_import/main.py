from a import start

start()
