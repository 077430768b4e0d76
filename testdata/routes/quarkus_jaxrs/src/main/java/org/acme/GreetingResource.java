package org.acme;

import jakarta.inject.Inject;
import jakarta.ws.rs.*;
import jakarta.ws.rs.core.MediaType;

@Path("/hello")
public class GreetingResource {
    @Inject
    GreetingService service;

    @GET
    @Produces(MediaType.TEXT_PLAIN)
    public String hello() {
        return service.greet("world");
    }

    @GET
    @Path("/{name}")
    public String helloName(@PathParam("name") String name) {
        return service.greet(name);
    }

    @POST
    @Path("echo")
    public String echo(String body) {
        return body;
    }

    @DELETE
    @Path("{id}")
    public void remove(@PathParam("id") long id) {
    }
}
