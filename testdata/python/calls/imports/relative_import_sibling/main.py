from pkg.api import handle

handle()
