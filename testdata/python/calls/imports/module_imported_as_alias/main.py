import storage as st


def run():
    st.save("k", 1)
    return st.load("k")


run()
