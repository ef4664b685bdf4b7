// Knex's settings: migrate the database DATABASE_URL names (see src/settings.js).
import { databaseUrl } from "./src/settings.js";

export default {
  client: "pg",
  connection: databaseUrl(),
  migrations: { directory: "./migrations", loadExtensions: [".js"] },
};
