"""The stock API: filing counts."""

from fastapi import APIRouter, Depends, HTTPException, status
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.db import session
from app.services import stock
from app.services.errors import NotFound

router = APIRouter(prefix="/api/locations", tags=["stock"])


class CountIn(BaseModel):
    quantity: int = Field(ge=0)


class CountOut(BaseModel):
    location: str
    sku: str
    quantity: int


@router.put("/{location_code}/stock/{sku_code}")
def file_count(
    location_code: str, sku_code: str, body: CountIn, db: Session = Depends(session)
) -> CountOut:
    try:
        stock.file_count(db, location_code, sku_code, body.quantity)
    except NotFound as missing:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(missing)) from missing
    return CountOut(location=location_code, sku=sku_code, quantity=body.quantity)
