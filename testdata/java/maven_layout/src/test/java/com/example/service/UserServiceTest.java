package com.example.service;

import com.example.repo.UserRepository;

/** Same package as UserService: no import needed. */
class UserServiceTest {
    void registersUser() {
        UserService service = new UserService(new UserRepository());
        assert service.register("ada").getName().equals("ada");
    }
}
