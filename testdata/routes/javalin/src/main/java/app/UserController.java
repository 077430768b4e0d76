package app;

import io.javalin.http.Context;

public class UserController {
    public static void getAll(Context ctx) {
        ctx.json(UserDao.all());
    }

    public static void create(Context ctx) {
        UserDao.add(ctx.body());
    }

    public static void getOne(Context ctx) {
        ctx.json(UserDao.find(ctx.pathParam("id")));
    }

    public static void delete(Context ctx) {
        UserDao.remove(ctx.pathParam("id"));
    }
}
