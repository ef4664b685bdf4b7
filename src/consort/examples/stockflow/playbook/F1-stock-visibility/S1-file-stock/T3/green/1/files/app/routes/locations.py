"""The location API."""

from fastapi import APIRouter, Depends, HTTPException, status
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.db import session
from app.services import catalogue
from app.services.errors import AlreadyExists

router = APIRouter(prefix="/api/locations", tags=["locations"])


class LocationIn(BaseModel):
    code: str
    name: str


class LocationOut(BaseModel):
    code: str
    name: str


@router.post("", status_code=status.HTTP_201_CREATED)
def register_location(body: LocationIn, db: Session = Depends(session)) -> LocationOut:
    try:
        location = catalogue.register_location(db, body.code, body.name)
    except AlreadyExists as refused:
        raise HTTPException(status.HTTP_409_CONFLICT, str(refused)) from refused
    return LocationOut(code=location.code, name=location.name)
