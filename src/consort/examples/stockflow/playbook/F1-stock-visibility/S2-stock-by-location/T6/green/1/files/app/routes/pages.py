"""The HTML pages."""

from fastapi import APIRouter, Depends, HTTPException, status
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from app.db import session
from app.pages.location import location_page
from app.repositories import locations, stock_records

router = APIRouter(tags=["pages"])


@router.get("/locations/{code}", response_class=HTMLResponse)
def stock_at_location(code: str, db: Session = Depends(session)) -> HTMLResponse:
    location = locations.by_code(db, code)
    if location is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no location has the code {code}")
    return HTMLResponse(location_page(location, stock_records.at_location(db, location.id)))
