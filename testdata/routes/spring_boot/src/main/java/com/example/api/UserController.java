package com.example.api;

import java.util.List;
import org.springframework.web.bind.annotation.*;

/** Users, under a class-level prefix. */
@RestController
@RequestMapping("/api/users")
public class UserController {
    private final UserStore store = new UserStore();

    @GetMapping
    public List<String> list() {
        return store.all();
    }

    @GetMapping("/{id}")
    public String get(@PathVariable long id) {
        return store.find(id);
    }

    @PostMapping(consumes = "application/json")
    public String create(@RequestBody String body) {
        return store.add(body);
    }

    @RequestMapping(value = "/{id}", method = RequestMethod.DELETE)
    public void delete(@PathVariable long id) {
        store.remove(id);
    }

    @RequestMapping(path = {"/search", "/find"}, method = {RequestMethod.GET, RequestMethod.POST})
    public List<String> search(@RequestParam String q) {
        return store.all();
    }
}
