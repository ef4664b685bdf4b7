"""GET /health: the app answers and reaches its database."""

from fastapi import APIRouter, Depends
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.db import session

router = APIRouter()


@router.get("/health")
def health(db: Session = Depends(session)) -> dict[str, str]:
    db.execute(text("SELECT 1"))
    return {"status": "ok"}
