package app;

import io.javalin.http.Context;
import io.javalin.http.Handler;

class HealthHandler implements Handler {
    @Override
    public void handle(Context ctx) {
        ctx.result("ok");
    }
}
