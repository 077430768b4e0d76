package hello;

import static spark.Spark.*;

public class HelloWorld {
    public static void main(String[] args) {
        port(4567);
        get("/hello", (req, res) -> "Hello World");
        path("/api", () -> {
            get("/books", BookApi::list);
            post("/books", "application/json", BookApi::add);
            path("/books", () -> delete("/:id", BookApi::remove));
        });
    }
}
