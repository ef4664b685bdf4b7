"""The HTML pages."""

from fastapi import APIRouter, Depends, status
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from app.db import session
from app.pages.home import home_page
from app.pages.html import not_found_page
from app.pages.location import location_page
from app.pages.sku import sku_page
from app.services import catalogue, stock
from app.services.errors import NotFound

router = APIRouter(tags=["pages"])


@router.get("/", response_class=HTMLResponse)
def home(db: Session = Depends(session)) -> HTMLResponse:
    return HTMLResponse(home_page(catalogue.all_locations(db)))


@router.get("/locations/{code}", response_class=HTMLResponse)
def stock_at_location(code: str, db: Session = Depends(session)) -> HTMLResponse:
    try:
        found = stock.stock_at_location(db, code)
    except NotFound:
        return HTMLResponse(
            not_found_page(f"No location has the code {code}."),
            status_code=status.HTTP_404_NOT_FOUND,
        )
    return HTMLResponse(location_page(found))


@router.get("/skus/{code}", response_class=HTMLResponse)
def stock_of_sku(code: str, db: Session = Depends(session)) -> HTMLResponse:
    try:
        found = stock.stock_of_sku(db, code)
    except NotFound:
        return HTMLResponse(
            not_found_page(f"No SKU has the code {code}."),
            status_code=status.HTTP_404_NOT_FOUND,
        )
    return HTMLResponse(sku_page(found))
