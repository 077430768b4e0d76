package com.example.repo;

import com.example.model.User;
import java.util.ArrayList;
import java.util.List;

/** Keeps users in memory. */
public class UserRepository implements Repository<User> {
    private final List<User> users = new ArrayList<>();

    @Override
    public void save(User user) {
        users.add(user);
    }

    @Override
    public List<User> findAll() {
        return users;
    }
}
