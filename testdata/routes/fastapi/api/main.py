from fastapi import FastAPI

from .routers import items, users

app = FastAPI()
app.include_router(users.router)
app.include_router(items.router, prefix="/v1")


@app.get("/health")
async def health():
    return {"ok": True}


@app.api_route("/echo", methods=["GET", "POST"])
async def echo():
    return {}
