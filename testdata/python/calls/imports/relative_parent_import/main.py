from pkg.sub.mod import run

run()
