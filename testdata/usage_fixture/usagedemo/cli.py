"""The argparse command line."""

import argparse

from .core import convert


def build_parser():
    parser = argparse.ArgumentParser(description="Convert documents.")
    parser.add_argument("source", help="the file to convert")
    add_output_options(parser)
    parser.add_argument("--strict", action="store_true", help="fail on unknown markup")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true")
    subparsers = parser.add_subparsers(dest="command")
    info = subparsers.add_parser("info", help="Show what a document holds.")
    info.add_argument("--verbose", "-v", action="count", default=0)
    info.set_defaults(func=show_info)
    return parser


def add_output_options(parser: argparse.ArgumentParser):
    parser.add_argument("-o", "--output", default="out.txt", help="where to write")


def show_info(args):
    print(args)


def main(argv=None):
    args = build_parser().parse_args(argv)
    convert(args.source, args.output)


def legacy_main():
    main()
