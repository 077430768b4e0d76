package example;

import io.micronaut.http.annotation.*;

@Controller("/hello")
public class HelloController {
    @Get
    public String index() {
        return "Hello";
    }

    @Get("/{name}")
    public String greet(String name) {
        return "Hello " + name;
    }

    @Post(uri = "/echo")
    public String echo(@Body String body) {
        return body;
    }
}
