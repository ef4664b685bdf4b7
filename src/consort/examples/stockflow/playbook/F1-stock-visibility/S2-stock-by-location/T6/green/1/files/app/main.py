"""The FastAPI application: routers are included here."""

from fastapi import FastAPI

from app.routes import health, locations, pages, skus, stock

app = FastAPI(title="StockFlow")
app.include_router(health.router)
app.include_router(skus.router)
app.include_router(locations.router)
app.include_router(stock.router)
app.include_router(pages.router)
