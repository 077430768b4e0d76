"""`rock-paper-scissors-flask` whose requirements.txt cannot be installed."""

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


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=5000)
