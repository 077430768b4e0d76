from pkg import render

render()
