from fastapi import APIRouter

router = APIRouter(prefix="/items")


@router.put("/{item_id}")
async def update_item(item_id: str):
    return {"id": item_id}
