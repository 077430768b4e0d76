from django.urls import path, re_path

from . import views

app_name = "polls"
urlpatterns = [
    path("", views.IndexView.as_view(), name="index"),
    path("<int:question_id>/", views.detail, name="detail"),
    re_path(r"^(?P<question_id>[0-9]+)/vote/$", views.vote, name="vote"),
]
urlpatterns += [path("about/", views.AboutView.as_view())]
