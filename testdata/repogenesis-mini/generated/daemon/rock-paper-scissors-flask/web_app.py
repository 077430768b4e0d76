"""`rock-paper-scissors-flask` whose start.sh forks the server into the background and exits."""

import random

from flask import Flask, request

app = Flask(__name__)

CHOICES = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}

PAGE = """<!DOCTYPE html>
<html>
<head><title>Rock-Paper-Scissors App</title></head>
<body>
<h1>Rock-Paper-Scissors App</h1>
{body}
</body>
</html>
"""

FORM = """<form action="/results" method="POST">
<select name="choice">
<option value="rock">rock</option>
<option value="paper">paper</option>
<option value="scissors">scissors</option>
</select>
<button type="submit">Play</button>
</form>"""


def outcome(user, computer):
    if user == computer:
        return "It's a tie!"
    return "You win!" if BEATS[user] == computer else "You lose!"


@app.route("/")
def index():
    return PAGE.format(body=FORM)


@app.route("/results", methods=["GET", "POST"])
def results():
    source = request.form if request.method == "POST" else request.args
    choice = source.get("choice", "rock")
    if choice not in CHOICES:
        choice = "rock"
    computer = random.choice(CHOICES)
    body = (
        f"<p>You chose: {choice}</p>\n"
        f"<p>The computer chose: {computer}</p>\n"
        f"<p>Results: {outcome(choice, computer)}</p>\n"
        '<a href="/">Play again</a>'
    )
    return PAGE.format(body=body)


def running(pid):
    """Whether process `pid` is alive (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


if __name__ == "__main__":
    # Serve only once start.sh (its pid is the argument) has returned, as a
    # daemon that detaches and then binds would: the harness then sees the
    # script end before anything answers, however loaded the machine is.
    import sys
    import time

    while len(sys.argv) > 1 and running(sys.argv[1]):
        time.sleep(0.05)
    app.run(host="0.0.0.0", port=5000)
