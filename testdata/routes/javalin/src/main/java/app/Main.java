package app;

import static io.javalin.apibuilder.ApiBuilder.*;

import io.javalin.Javalin;

public class Main {
    public static void main(String[] args) {
        Javalin app = Javalin.create(config -> {
            config.router.apiBuilder(() -> {
                path("users", () -> {
                    get(UserController::getAll);
                    post(UserController::create);
                    path("{id}", () -> {
                        get(UserController::getOne);
                        delete(UserController::delete);
                    });
                });
            });
        });
        app.get("/", ctx -> ctx.result("Hello World"));
        app.get("/health", new HealthHandler());
        app.start(7070);
    }
}
