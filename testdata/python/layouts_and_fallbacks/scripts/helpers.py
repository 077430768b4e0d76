def banner():
    print("report")
