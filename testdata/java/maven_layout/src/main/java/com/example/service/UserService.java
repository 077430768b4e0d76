package com.example.service;

import com.example.model.User;
import com.example.repo.UserRepository;
import java.util.List;
import java.util.stream.Collectors;

/** Registers users. */
public class UserService {
    private final UserRepository repository;

    public UserService(UserRepository repository) {
        this.repository = repository;
    }

    /** Creates and stores a user. */
    public User register(String name) {
        User user = new User(name);
        repository.save(user);
        repository.first().ifPresent(u -> log(u.describe()));
        log(repository.describeAll());
        return user;
    }

    public List<String> names() {
        return repository.findAll().stream().map(User::getName).collect(Collectors.toList());
    }

    private void log(String message) {
        if (message.isEmpty()) {
            return;
        }
        System.err.println(message);
    }
}
