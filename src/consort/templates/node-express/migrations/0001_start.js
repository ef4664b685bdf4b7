// The first migration: nothing yet. Each migration is a file here, applied once, in name order
// (`npx knex migrate:latest`); an applied migration is never edited.
export async function up() {}

export async function down() {}
