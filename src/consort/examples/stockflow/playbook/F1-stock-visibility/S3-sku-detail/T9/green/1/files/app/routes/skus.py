"""The SKU API."""

from fastapi import APIRouter, Depends, HTTPException, status
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.db import session
from app.services import catalogue, stock
from app.services.errors import AlreadyExists, NotFound

router = APIRouter(prefix="/api/skus", tags=["skus"])


class SkuIn(BaseModel):
    code: str
    name: str


class SkuOut(BaseModel):
    code: str
    name: str


class LocationCountOut(BaseModel):
    location: str
    name: str
    quantity: int


class SkuStockOut(BaseModel):
    code: str
    name: str
    stock: list[LocationCountOut]
    total: int


@router.post("", status_code=status.HTTP_201_CREATED)
def register_sku(body: SkuIn, db: Session = Depends(session)) -> SkuOut:
    try:
        sku = catalogue.register_sku(db, body.code, body.name)
    except AlreadyExists as refused:
        raise HTTPException(status.HTTP_409_CONFLICT, str(refused)) from refused
    return SkuOut(code=sku.code, name=sku.name)


@router.get("/{code}")
def stock_of_sku(code: str, db: Session = Depends(session)) -> SkuStockOut:
    try:
        found = stock.stock_of_sku(db, code)
    except NotFound as missing:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(missing)) from missing
    return SkuStockOut(
        code=found.sku.code,
        name=found.sku.name,
        stock=[
            LocationCountOut(location=c.location_code, name=c.location_name, quantity=c.quantity)
            for c in found.counts
        ],
        total=found.total,
    )
