"""The SKU API."""

from fastapi import APIRouter, Depends, status
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.db import session
from app.services import catalogue

router = APIRouter(prefix="/api/skus", tags=["skus"])


class SkuIn(BaseModel):
    code: str
    name: str


class SkuOut(BaseModel):
    code: str
    name: str


@router.post("", status_code=status.HTTP_201_CREATED)
def register_sku(body: SkuIn, db: Session = Depends(session)) -> SkuOut:
    sku = catalogue.register_sku(db, body.code, body.name)
    return SkuOut(code=sku.code, name=sku.name)
