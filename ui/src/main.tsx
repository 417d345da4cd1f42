import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import "./styles.css";
// After styles.css: its safe-area rules for the page's fixed parts come later in the stylesheet.
import { AppNotices, registerServiceWorker } from "./pwa";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
    <AppNotices />
  </StrictMode>,
);

registerServiceWorker();
