from django.http import HttpResponse
from django.views import generic


class IndexView(generic.ListView):
    def get(self, request):
        return HttpResponse("index")


class AboutView(generic.TemplateView):
    template_name = "about.html"


def detail(request, question_id):
    return HttpResponse(question_id)


def vote(request, question_id):
    if request.method == "POST":
        return HttpResponse("voted")
    return HttpResponse("form")
