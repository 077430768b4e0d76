package hello;

import spark.Request;
import spark.Response;

class BookApi {
    static Object list(Request req, Response res) {
        return "[]";
    }

    static Object add(Request req, Response res) {
        return req.body();
    }

    static Object remove(Request req, Response res) {
        return req.params(":id");
    }
}
