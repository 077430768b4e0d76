package com.example.javalintaskmanager;

import io.javalin.Javalin;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** A partial javalin-task-manager: users and the project list only. */
public class App {
    private static final Map<Integer, Map<String, Object>> USERS = new ConcurrentHashMap<>();
    private static final AtomicInteger NEXT_ID = new AtomicInteger(1);

    public static Javalin start(int port) {
        Javalin app = Javalin.create();
        app.post("/users", ctx -> {
            Map<String, Object> user = ctx.bodyAsClass(Map.class);
            int id = NEXT_ID.getAndIncrement();
            user.put("id", id);
            user.remove("password");
            USERS.put(id, user);
            ctx.status(201).json(user);
        });
        app.post("/users/login", ctx -> ctx.json(Map.of("token", "token-" + USERS.size())));
        app.get("/projects", ctx -> ctx.json(java.util.List.of()));
        return app.start(port);
    }

    public static void main(String[] args) {
        start(7000);
    }
}
