"""`SimpleFastPyAPI` with a wrong status: an unknown user is 400, not 404."""

import sqlite3
import threading

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

app = FastAPI()
db = sqlite3.connect(":memory:", check_same_thread=False)
db.execute(
    "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, email TEXT, password TEXT)"
)
lock = threading.Lock()


class UserCreate(BaseModel):
    name: str
    email: str
    password: str


class UserUpdate(BaseModel):
    name: str
    email: str


class User(BaseModel):
    id: int
    name: str
    email: str
    password: str


def row_to_user(row):
    return User(id=row[0], name=row[1], email=row[2], password=row[3])


@app.get("/users/")
def list_users():
    with lock:
        rows = db.execute("SELECT id, name, email, password FROM users").fetchall()
    return [row_to_user(r) for r in rows]


@app.get("/users/{user_id}")
def get_user(user_id: int):
    with lock:
        row = db.execute(
            "SELECT id, name, email, password FROM users WHERE id = ?", (user_id,)
        ).fetchone()
    if row is None:
        raise HTTPException(status_code=400, detail="User not found")
    return row_to_user(row)


@app.post("/users/")
def create_user(user: UserCreate):
    with lock:
        cur = db.execute(
            "INSERT INTO users (name, email, password) VALUES (?, ?, ?)",
            (user.name, user.email, user.password),
        )
        db.commit()
    return User(id=cur.lastrowid, **user.model_dump())


@app.put("/users/{user_id}")
def update_user(user_id: int, user: UserUpdate):
    with lock:
        cur = db.execute(
            "UPDATE users SET name = ?, email = ? WHERE id = ?", (user.name, user.email, user_id)
        )
        db.commit()
    if cur.rowcount == 0:
        raise HTTPException(status_code=404, detail="User not found")
    return {"message": "User updated successfully"}


@app.delete("/users/{user_id}")
def delete_user(user_id: int):
    with lock:
        cur = db.execute("DELETE FROM users WHERE id = ?", (user_id,))
        db.commit()
    if cur.rowcount == 0:
        raise HTTPException(status_code=404, detail="User not found")
    return {"message": "User deleted successfully"}
