package com.example;

import com.example.repo.*;
import com.example.service.UserService;
import static com.example.util.Strings.shout;
import static com.example.util.Strings.*;
import java.util.List;

/**
 * Command-line entry point.
 *
 * <p>Wires the service and greets a user.
 */
public class App {
    private final UserService service;

    /** Wires the application with an in-memory repository. */
    public App() {
        this(new UserService(new UserRepository()));
    }

    App(UserService service) {
        this.service = service;
    }

    /** Runs the application. */
    public static void main(String[] args) {
        App app = new App();
        app.start(args.length > 0 ? args[0] : "world");
    }

    void start(String name) {
        var user = service.register(name);
        System.out.println(shout(user.getName()));
        List<String> names = service.names();
        names.forEach(App::print);
        print(pad(name, 3));
        print(describe(42));
        print(describe("answer"));
    }

    static void print(String line) {
        System.out.println(line);
    }
}
