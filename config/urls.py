from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from preview_app import views as preview_views

urlpatterns = [
    path("", preview_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
