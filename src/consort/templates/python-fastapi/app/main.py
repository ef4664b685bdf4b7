"""The FastAPI application: routers are included here."""

from fastapi import FastAPI

from app.routes import health

app = FastAPI(title="{{project_name}}")
app.include_router(health.router)
