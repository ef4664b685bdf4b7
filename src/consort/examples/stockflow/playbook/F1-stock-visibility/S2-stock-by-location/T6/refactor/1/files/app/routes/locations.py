"""The location API."""

from fastapi import APIRouter, Depends, HTTPException, status
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.db import session
from app.services import catalogue, stock
from app.services.errors import AlreadyExists, NotFound

router = APIRouter(prefix="/api/locations", tags=["locations"])


class LocationIn(BaseModel):
    code: str
    name: str


class LocationOut(BaseModel):
    code: str
    name: str


class SkuCountOut(BaseModel):
    sku: str
    name: str
    quantity: int


class LocationStockOut(BaseModel):
    location: str
    name: str
    stock: list[SkuCountOut]


@router.post("", status_code=status.HTTP_201_CREATED)
def register_location(body: LocationIn, db: Session = Depends(session)) -> LocationOut:
    try:
        location = catalogue.register_location(db, body.code, body.name)
    except AlreadyExists as refused:
        raise HTTPException(status.HTTP_409_CONFLICT, str(refused)) from refused
    return LocationOut(code=location.code, name=location.name)


@router.get("/{code}/stock")
def stock_at_location(code: str, db: Session = Depends(session)) -> LocationStockOut:
    try:
        found = stock.stock_at_location(db, code)
    except NotFound as missing:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(missing)) from missing
    return LocationStockOut(
        location=found.location.code,
        name=found.location.name,
        stock=[
            SkuCountOut(sku=c.sku_code, name=c.sku_name, quantity=c.quantity)
            for c in found.counts
        ],
    )
