from factory import make_parser


def run():
    parser = make_parser()
    return parser("1,2")


run()
