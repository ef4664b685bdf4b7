// Start the app: `node src/server.js [PORT]`, on 127.0.0.1.
import { app } from "./app.js";

const port = Number(process.argv[2] || process.env.PORT || 3000);
app.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${port}`);
});
