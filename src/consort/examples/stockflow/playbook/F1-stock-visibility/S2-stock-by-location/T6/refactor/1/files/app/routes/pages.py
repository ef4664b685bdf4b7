"""The HTML pages."""

from fastapi import APIRouter, Depends, HTTPException, status
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from app.db import session
from app.pages.location import location_page
from app.services import stock
from app.services.errors import NotFound

router = APIRouter(tags=["pages"])


@router.get("/locations/{code}", response_class=HTMLResponse)
def stock_at_location(code: str, db: Session = Depends(session)) -> HTMLResponse:
    try:
        found = stock.stock_at_location(db, code)
    except NotFound as missing:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(missing)) from missing
    return HTMLResponse(location_page(found))
