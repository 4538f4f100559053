"""The command-line tools (ge-compile, ge-run, ge-opt, ge-compare, ge-quantize)."""

import argparse


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the tools' error form: a bad argument prints one `<prog>: error:` line
    and exits with 1 (argparse prints its usage and exits with 2)."""

    def error(self, message: str):
        self.exit(1, f"{self.prog}: error: {message} (--help lists the options)\n")
